module github.com/arbiterhq/arbiter/channel/webchat/browsertest

go 1.26.0

require (
	github.com/arbiterhq/arbiter v0.0.0-00010101000000-000000000000
	github.com/chromedp/chromedp v0.23.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/arbiterhq/arbiter => ../../..
