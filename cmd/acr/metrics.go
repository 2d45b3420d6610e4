package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/storage"
)

// workerMetrics is what acr worker --metrics serves: Prometheus metrics
// in a registry of its own (nothing global), and the store's health as
// the worker's requests last found it.
type workerMetrics struct {
	reg *prometheus.Registry

	held         prometheus.Gauge
	cycles       *prometheus.CounterVec
	effects      *prometheus.CounterVec
	providerFail prometheus.Counter
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	waiting      prometheus.Counter
	renewals     prometheus.Counter
	leaseLost    prometheus.Counter
	storeUp      prometheus.Gauge
	byState      *prometheus.GaugeVec

	wall func() time.Time
	// changed, when set, hears the store stop or start answering.
	changed func(up bool, down time.Time)
	mu      sync.Mutex
	// down is when the store stopped answering (zero while it answers).
	down time.Time
}

func newWorkerMetrics(wall func() time.Time) *workerMetrics {
	m := &workerMetrics{reg: prometheus.NewRegistry(), wall: wall}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.held = prometheus.NewGauge(prometheus.GaugeOpts{Name: "acr_worker_runs_held", Help: "Runs this worker is running now, each under its lease."})
	m.cycles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acr_worker_cycles_total", Help: "Cycles run, by the disposition they ended in."}, []string{"disposition"})
	m.effects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acr_worker_effects_total", Help: "Effects carried out, by outcome (committed, not_applied, failed, ...)."}, []string{"outcome"})
	m.providerFail = prometheus.NewCounter(prometheus.CounterOpts{Name: "acr_worker_provider_failures_total", Help: "Provider failures (checks, proposer, world) that kept a cycle from happening."})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acr_store_requests_total", Help: "Requests to the store (attempts), by operation and result: ok, unavailable, conflict, error."}, []string{"op", "result"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "acr_store_request_seconds", Help: "Time until the store answered a request (or the attempt gave up), by operation.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"op"})
	m.waiting = prometheus.NewCounter(prometheus.CounterOpts{Name: "acr_store_wait_seconds_total", Help: "Seconds spent waiting for a store that did not answer: unanswered attempts and the pauses before the next."})
	m.renewals = prometheus.NewCounter(prometheus.CounterOpts{Name: "acr_worker_lease_renewals_total", Help: "Lease renewals the store accepted."})
	m.leaseLost = prometheus.NewCounter(prometheus.CounterOpts{Name: "acr_worker_leases_lost_total", Help: "Runs whose lease was lost (expired during an outage, broken, taken) while this worker ran them."})
	m.storeUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "acr_store_up", Help: "1 while the store answers the worker's requests, 0 during an outage."})
	m.storeUp.Set(1)
	m.byState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "acr_store_runs", Help: "The store's runs by disposition (CONTINUE, IDLE, WAIT_APPROVAL, FAULTED, ...), as the worker's last look for due runs found them."}, []string{"disposition"})
	for _, c := range []prometheus.Collector{m.held, m.cycles, m.effects, m.providerFail, m.requests, m.latency, m.waiting, m.renewals, m.leaseLost, m.storeUp, m.byState,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// observe hears one request to the store.
func (m *workerMetrics) observe(c storage.Call) {
	result := "ok"
	switch {
	case c.Err == nil:
	case errors.Is(c.Err, storage.ErrUnavailable):
		result = "unavailable"
	case errors.Is(c.Err, storage.ErrConflict), errors.Is(c.Err, storage.ErrBusy), errors.Is(c.Err, storage.ErrLeaseLost):
		result = "conflict"
	default:
		result = "error"
	}
	m.requests.WithLabelValues(c.Op, result).Inc()
	m.latency.WithLabelValues(c.Op).Observe(c.Took.Seconds())
	if result == "unavailable" {
		m.waiting.Add((c.Took + c.Waited).Seconds())
	}
	if c.Op == "lease.renew" && result == "ok" {
		m.renewals.Inc()
	}
	m.mu.Lock()
	var down time.Time
	changed, up := false, false
	switch {
	case result == "unavailable" && m.down.IsZero():
		m.down = m.wall()
		m.storeUp.Set(0)
		changed, down = true, m.down
	case result != "unavailable" && !m.down.IsZero():
		changed, up, down = true, true, m.down
		m.down = time.Time{}
		m.storeUp.Set(1)
	}
	m.mu.Unlock()
	if changed && m.changed != nil {
		m.changed(up, down)
	}
}

// runs hears the store's runs, listed for a pass over what is due.
func (m *workerMetrics) runs(all []storage.RunStatus) {
	n := map[string]float64{}
	for _, st := range all {
		d := st.Disposition
		if d == "" {
			d = "unknown"
		}
		n[d]++
	}
	m.byState.Reset()
	for d, c := range n {
		m.byState.WithLabelValues(d).Set(c)
	}
}

// cycle hears one completed cycle.
func (m *workerMetrics) cycle(s kernel.Summary) {
	m.cycles.WithLabelValues(s.LoopDisposition.String()).Inc()
	if s.Outcome != "" {
		m.effects.WithLabelValues(s.Outcome).Inc()
	}
}

// notice hears what the driver reports outside cycles.
func (m *workerMetrics) notice(n kernel.Notice) {
	if _, ok := n.Fields["consecutive"]; ok && n.Level == "warn" {
		m.providerFail.Inc()
	}
}

// health says whether the store answers, and since when it does not.
func (m *workerMetrics) health() (ok bool, since time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down.IsZero(), m.down
}

// serve listens on addr and serves /metrics and /healthz until stop.
func (m *workerMetrics) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, since := m.health()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "store unavailable since %s\n", since.UTC().Format(time.RFC3339))
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
