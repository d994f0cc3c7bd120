package main

import (
	"fmt"
	"io"
)

// Finding is what the checks say about one Service (or one document that could not be read).
type Finding struct {
	Source    string   `json:"source"`
	Document  int      `json:"document"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Errors    []string `json:"errors"`
	Warnings  []string `json:"warnings"`
}

// Report is every document read and every Service checked.
type Report struct {
	Documents int       `json:"documents"`
	Services  []Finding `json:"services"`
	// Unreadable holds the documents that are not YAML objects (they count as errors).
	Unreadable []Finding `json:"unreadable"`
}

// Add merges the result of one input into the report.
func (r *Report) Add(other Report) {
	r.Documents += other.Documents
	r.Services = append(r.Services, other.Services...)
	r.Unreadable = append(r.Unreadable, other.Unreadable...)
}

// Errors counts the errors of every Service and every unreadable document.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Services {
		n += len(f.Errors)
	}
	for _, f := range r.Unreadable {
		n += len(f.Errors)
	}
	return n
}

// Print writes one line per error and warning, then a summary line.
func (r *Report) Print(w io.Writer) {
	warnings := 0
	for _, f := range r.Unreadable {
		for _, e := range f.Errors {
			fmt.Fprintf(w, "error: %s document %d: %s\n", f.Source, f.Document, e)
		}
	}
	for _, f := range r.Services {
		for _, e := range f.Errors {
			fmt.Fprintf(w, "error: Service %s/%s: %s\n", f.Namespace, f.Name, e)
		}
		for _, e := range f.Warnings {
			fmt.Fprintf(w, "warning: Service %s/%s: %s\n", f.Namespace, f.Name, e)
		}
		warnings += len(f.Warnings)
	}
	fmt.Fprintf(w, "%d document(s), %d Service(s), %d error(s), %d warning(s)\n",
		r.Documents, len(r.Services), r.Errors(), warnings)
}
