package observe

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// clearOTelEnv unsets the variables NewTracing reads, for the test.
func clearOTelEnv(t *testing.T) {
	for _, name := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	} {
		t.Setenv(name, "")
	}
}

// traceModelTurn traces modelTurn with a Tracing made from cfg and shuts it
// down, which flushes the spans to the exporter.
func traceModelTurn(t *testing.T, cfg Config) *Tracing {
	t.Helper()
	tr, shutdown, err := NewTracing(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.Observe(modelTurn())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestExporterNames(t *testing.T) {
	for _, tc := range []struct {
		configured string
		env        map[string]string
		want       []string
		wantErr    bool
	}{
		{configured: "", want: nil},
		{configured: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: nil},
		{configured: "stdout", want: []string{"stdout"}},
		{configured: "otlp, console,stdout", want: []string{"otlp", "stdout"}},
		{configured: "", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: []string{"stdout"}},
		{configured: "", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, want: nil},
		{configured: "", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: []string{"otlp"}},
		{configured: "", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, want: []string{"otlp"}},
		{configured: "", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: nil},
		{configured: "zipkin", wantErr: true},
		{configured: "", env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, wantErr: true},
	} {
		t.Run(tc.configured+"/"+strings.Join(mapKeys(tc.env), ","), func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, err := exporterNames(tc.configured)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("exporters %v, want %v", got, tc.want)
			}
		})
	}
}

func mapKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func TestStdoutExporterAndResource(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "arbiter-eu")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	var buf bytes.Buffer
	if tr := traceModelTurn(t, Config{ServiceName: "from-config", Exporter: "stdout", Writer: &buf}); !tr.Enabled() || tr.TracerProvider() == nil {
		t.Fatal("stdout tracing disabled")
	}
	out := buf.String()
	for _, want := range []string{`"Name":"arbiter.turn"`, `"Name":"chat claude-haiku"`, "arbiter-eu", "deployment.environment.name"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout output lacks %s", want)
		}
	}
	if strings.Contains(out, "from-config") {
		t.Error("OTEL_SERVICE_NAME did not override Config.ServiceName")
	}
}

func TestServiceNameDefault(t *testing.T) {
	clearOTelEnv(t)
	var buf bytes.Buffer
	traceModelTurn(t, Config{Exporter: "console", Writer: &buf})
	if !strings.Contains(buf.String(), `"Value":"arbiter"`) {
		t.Errorf("no service.name arbiter in %.300s", buf.String())
	}
}

func TestSDKDisabled(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_SDK_DISABLED", "TRUE")
	var buf bytes.Buffer
	tr := traceModelTurn(t, Config{Exporter: "stdout", Writer: &buf})
	if tr.Enabled() || buf.Len() != 0 {
		t.Errorf("OTEL_SDK_DISABLED: enabled %v, output %d bytes", tr.Enabled(), buf.Len())
	}
}

func TestConfigErrors(t *testing.T) {
	clearOTelEnv(t)
	if _, _, err := NewTracing(context.Background(), Config{Exporter: "zipkin"}); err == nil {
		t.Error("unknown exporter accepted")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, _, err := NewTracing(context.Background(), Config{Exporter: "otlp"}); err == nil {
		t.Error("http/json accepted")
	}
}

// collector receives OTLP export requests.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltrace.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// spanNames lists the service names and span names received.
func (c *collector) received() (services, spans []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, req := range c.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					services = append(services, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans = append(spans, s.GetName())
				}
			}
		}
	}
	return services, spans
}

func checkReceived(t *testing.T, c *collector) {
	t.Helper()
	services, spans := c.received()
	if len(spans) != 9 {
		t.Errorf("collector got spans %v, want the 9 of one turn", spans)
	}
	for _, s := range services {
		if s != "arbiter-test" {
			t.Errorf("service.name %q", s)
		}
	}
}

func TestOTLPHTTPFromEnvironment(t *testing.T) {
	clearOTelEnv(t)
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("unexpected request %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		if r.Header.Get("X-Tenant") != "ops" {
			t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", r.Header)
		}
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("decode export: %v", err)
		}
		_, _ = c.Export(r.Context(), &req)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=ops")
	if tr := traceModelTurn(t, Config{ServiceName: "arbiter-test"}); !tr.Enabled() {
		t.Fatal("an OTLP endpoint in the environment did not enable tracing")
	}
	checkReceived(t, c)
}

func TestOTLPGRPCFromEnvironment(t *testing.T) {
	clearOTelEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	traceModelTurn(t, Config{ServiceName: "arbiter-test"})
	checkReceived(t, c)
}
