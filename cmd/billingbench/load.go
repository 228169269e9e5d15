package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// load is a closed-loop HTTP load: conns workers, each on its own
// keep-alive connection, send requests back to back until requests have
// been sent or the time limit has passed.
type load struct {
	conns    int
	requests int
	limit    time.Duration
	// request returns the i-th request's method, path and body (nil for
	// none); it is called concurrently.
	request func(i int) (method, path string, body []byte)
	// status is the expected answer; any other fails the load.
	status int
	auth   string
	// completed, when set, counts the requests answered so far, for a
	// caller that stops the load by its context.
	completed *atomic.Int64
}

// loadResult is what a load measured.
type loadResult struct {
	requests int
	elapsed  time.Duration
	p99      time.Duration
}

// perSecond returns the completed requests per second times per (the
// items each request carries).
func (r loadResult) perSecond(per int) float64 {
	return float64(r.requests*per) / r.elapsed.Seconds()
}

// run sends the load to baseURL.
func (l load) run(ctx context.Context, baseURL string) (loadResult, error) {
	tr := &http.Transport{
		MaxIdleConns:        l.conns,
		MaxIdleConnsPerHost: l.conns,
		MaxConnsPerHost:     l.conns,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(ctx, l.limit)
	defer cancel()

	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	latencies := make([][]time.Duration, l.conns)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range l.conns {
		wg.Go(func() {
			buf := new(bytes.Buffer)
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= l.requests {
					return
				}
				t0 := time.Now()
				err := l.do(ctx, client, baseURL, i, buf)
				if ctx.Err() != nil {
					return // cut off by the time limit: not counted
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				latencies[w] = append(latencies[w], time.Since(t0))
				if l.completed != nil {
					l.completed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	all := slices.Concat(latencies...)
	if len(all) == 0 {
		return loadResult{}, fmt.Errorf("no request completed within %v", l.limit)
	}
	slices.Sort(all)
	return loadResult{requests: len(all), elapsed: elapsed, p99: all[(len(all)*99)/100]}, nil
}

// do sends request i and reads its answer into buf.
func (l load) do(ctx context.Context, client *http.Client, baseURL string, i int, buf *bytes.Buffer) error {
	method, path, body := l.request(i)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, baseURL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if l.auth != "" {
		req.Header.Set("Authorization", l.auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != l.status {
		return fmt.Errorf("%s %s answered %d, want %d: %.300s", method, path, resp.StatusCode, l.status, buf.Bytes())
	}
	return nil
}

// send sends one request and returns the answer's body, which must come
// with status.
func send(ctx context.Context, baseURL, auth, method, path string, body []byte, status int) ([]byte, error) {
	l := load{auth: auth, status: status, request: func(int) (string, string, []byte) { return method, path, body }}
	buf := new(bytes.Buffer)
	if err := l.do(ctx, http.DefaultClient, baseURL, 0, buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
