// Command mcpserver is a small MCP server over stdio for the tests of
// package mcptool, built by them with `go build`.
//
//	mcpserver [-gate FILE] [-spawn]
//
// With -gate it exits at once, with a message on stderr, unless FILE exists:
// tests hold a server down that way while the manager tries to restart it.
// With -spawn it starts a long sleep in a child process, whose pid the tool
// "child" returns: tests check that children are stopped with the server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	gate := flag.String("gate", "", "exit at once unless this file exists")
	spawn := flag.Bool("spawn", false, "start a child process that sleeps")
	flag.Parse()
	if *gate != "" {
		if _, err := os.Stat(*gate); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver: gate closed, refusing to start")
			os.Exit(3)
		}
	}
	fmt.Fprintln(os.Stderr, "mcpserver: starting")
	child := 0
	if *spawn {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			log.Fatalf("mcpserver: spawn: %v", err)
		}
		child = cmd.Process.Pid
	}
	if err := newServer(child).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatalf("mcpserver: %v", err)
	}
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type textIn struct {
	Text string `json:"text"`
}

type msIn struct {
	MS int `json:"ms"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(child int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptool-test", Version: "v1"}, nil)
	if child != 0 {
		mcp.AddTool(s, &mcp.Tool{Name: "child", Description: "Returns the child process's id."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text(fmt.Sprint(child)), nil, nil
			})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails with its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(in.Text)
		})
	s.AddTool(&mcp.Tool{Name: "broken", Description: "Fails with a protocol error.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("database is down")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "Returns the request's _meta."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return nil, map[string]any(req.Params.Meta), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "parts", Description: "Returns several content parts."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "first"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
				&mcp.TextContent{Text: "second"},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps ms milliseconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in msIn) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
			return text(strings.Repeat("z", 3)), nil, nil
		})
	return s
}
