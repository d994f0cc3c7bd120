// Command knative-validate runs Knative Serving's own admission checks on the Services of
// multi-document YAML, as Serving's webhook runs them on a create: the object decoded strictly
// into serving.knative.dev/v1 Service, SetDefaults (the defaulting webhook), then Validate (the
// validation webhook), in a context carrying a default install's config-defaults,
// config-features and config-autoscaler. Usage:
//
//	knative-validate [--json] [FILE...]   (no FILE, or "-": stdin)
//
// Prints each error (and warning) with the Service's namespace/name; exits 1 when any Service
// has an error, 2 when the input cannot be read. See docs/adr/0066.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	asJSON := flag.Bool("json", false, "print the report as one JSON object")
	flag.Parse()
	report := Report{Services: []Finding{}, Unreadable: []Finding{}}
	inputs := flag.Args()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, name := range inputs {
		text, err := readInput(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "knative-validate: %v\n", err)
			os.Exit(2)
		}
		report.Add(CheckDocuments(name, text))
	}
	if *asJSON {
		out, err := json.Marshal(report)
		if err != nil {
			fmt.Fprintf(os.Stderr, "knative-validate: %v\n", err)
			os.Exit(2)
		}
		fmt.Println(string(out))
	} else {
		report.Print(os.Stdout)
	}
	if report.Errors() > 0 {
		os.Exit(1)
	}
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}
