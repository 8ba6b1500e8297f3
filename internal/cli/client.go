package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Environment variables of the client.
const (
	EnvGateway = "STEPWISE_GATEWAY"
	EnvAPIKey  = "STEPWISE_API_KEY"
)

// DefaultGateway is where the client looks when neither --gateway nor
// $STEPWISE_GATEWAY says.
const DefaultGateway = "http://127.0.0.1:8080"

// client talks to one gateway.
type client struct {
	base string
	key  string
	http *http.Client
}

func newClient(gateway string) *client {
	if gateway == "" {
		gateway = os.Getenv(EnvGateway)
	}
	if gateway == "" {
		gateway = DefaultGateway
	}
	return &client{base: strings.TrimSuffix(gateway, "/"), key: os.Getenv(EnvAPIKey), http: &http.Client{Timeout: time.Minute}}
}

// gatewayError is an error answer of the gateway.
type gatewayError struct {
	Status  int
	Code    string
	Message string
}

func (e *gatewayError) Error() string {
	return fmt.Sprintf("the gateway answered %d %s: %s", e.Status, e.Code, e.Message)
}

// request sends body (JSON, or the bytes as contentType says) and decodes
// a 2xx answer into out (nil: discard it).
func (c *client) request(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("the gateway at %s did not answer: %w", c.base, err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			e.Error.Message = strings.TrimSpace(string(raw))
		}
		return &gatewayError{Status: res.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// json sends v as JSON.
func (c *client) json(ctx context.Context, method, path string, v, out any) error {
	var body []byte
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body = b
	}
	return c.request(ctx, method, path, "application/json", body, out)
}

// stream opens a GET whose answer is read as it comes (an event stream).
func (c *client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := (&http.Client{}).Do(req) // no timeout: a stream lasts as long as the run
	if err != nil {
		return nil, fmt.Errorf("the gateway at %s did not answer: %w", c.base, err)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		return nil, &gatewayError{Status: res.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	return res.Body, nil
}
