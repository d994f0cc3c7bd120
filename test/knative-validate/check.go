package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"knative.dev/pkg/apis"
	"knative.dev/serving/pkg/apis/config"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The user the webhooks see on the request (SetDefaults records it as the creator).
var requester = authenticationv1.UserInfo{Username: "swr-knative-validate"}

// webhookContext is the context Serving's webhooks give SetDefaults and Validate on a create in a
// default install: config.Store.ToContext over the install's config-defaults, config-features and
// config-autoscaler ConfigMaps, which carry only `_example` (so each is its package's defaults,
// what FromContextOrDefaults builds), the requesting user and apis.WithinCreate.
func webhookContext() context.Context {
	ctx := config.ToContext(context.Background(), config.FromContextOrDefaults(context.Background()))
	ctx = apis.WithUserInfo(ctx, &requester)
	return apis.WithinCreate(ctx)
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// CheckDocuments checks every serving.knative.dev/v1 Service among the YAML documents of text.
func CheckDocuments(source string, text []byte) Report {
	report := Report{Services: []Finding{}, Unreadable: []Finding{}}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	for index := 1; ; index++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return report
		}
		unreadable := func(err error) {
			report.Unreadable = append(report.Unreadable,
				Finding{Source: source, Document: index, Errors: []string{err.Error()}})
		}
		if err != nil {
			unreadable(err)
			return report
		}
		data, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			unreadable(err)
			continue
		}
		if t := bytes.TrimSpace(data); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		report.Documents++
		var meta typeMeta
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &meta); err != nil {
			unreadable(err)
			continue
		}
		if meta.APIVersion != servingv1.SchemeGroupVersion.String() || meta.Kind != "Service" {
			continue
		}
		f := checkService(data)
		f.Source, f.Document = source, index
		report.Services = append(report.Services, f)
	}
}

// checkService decodes one Service strictly (an unknown or duplicated field, or a field named
// with other case, is an error, as fieldValidation=Strict makes it), then runs the webhooks.
func checkService(data []byte) Finding {
	var svc servingv1.Service
	f := Finding{Errors: []string{}, Warnings: []string{}}
	strict, err := kjson.UnmarshalStrict(data, &svc)
	f.Namespace, f.Name = svc.Namespace, svc.Name
	if err != nil {
		f.Errors = append(f.Errors, "decode: "+err.Error())
		return f
	}
	for _, e := range strict {
		f.Errors = append(f.Errors, "decode: "+e.Error())
	}
	ctx := webhookContext()
	svc.SetDefaults(ctx)
	result := svc.Validate(ctx)
	f.Errors = append(f.Errors, lines(result.Filter(apis.ErrorLevel))...)
	f.Warnings = append(f.Warnings, lines(result.Filter(apis.WarningLevel))...)
	return f
}

// lines is one message per field error, each naming its field paths.
func lines(fe *apis.FieldError) []string {
	out := []string{}
	if fe == nil {
		return out
	}
	for _, e := range fe.WrappedErrors() {
		out = append(out, strings.ReplaceAll(e.Error(), "\n", " "))
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprint(fe.Error()))
	}
	return out
}
