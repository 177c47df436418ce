package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/engine/app"
)

func init() {
	register(command{
		name:    "model",
		summary: "serve a local model: `bcode model serve --model FILE.gguf` starts and supervises llama-server",
		run:     cmdModel,
	})
}

func cmdModel(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(stderr, "usage: bcode model serve --model FILE.gguf [flags] [-- extra llama-server args]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	return cmdModelServe(ctx, eng, args[1:], stdout, stderr)
}

func cmdModelServe(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bcode model serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := app.DefaultModelServer()
	fs.StringVar(&o.Model, "model", "", "the GGUF model file to serve (required; nothing is downloaded)")
	fs.StringVar(&o.Binary, "llama-server", o.Binary, "llama.cpp's llama-server binary (path or name on PATH)")
	fs.StringVar(&o.Host, "host", o.Host, "address to listen on")
	intFlag(fs, &o.Port, "port", o.Port, 1, 65535, "port to listen on (bcode's [model] endpoint defaults to 8080)")
	intFlag(fs, &o.Context, "ctx", o.Context, config.DefaultMinContext, maxModelContext, "context window in tokens (-c)")
	intFlag(fs, &o.GPULayers, "ngl", o.GPULayers, 0, maxModelLayers, "layers offloaded to the GPU (-ngl)")
	intFlag(fs, &o.CPUMoE, "n-cpu-moe", o.CPUMoE, 0, maxModelLayers, "layers whose MoE experts stay in system RAM (--n-cpu-moe)")
	durationFlag(fs, &o.LoadTimeout, "load-timeout", o.LoadTimeout, time.Second, maxTimeout, "how long to wait for the model to load")
	quiet := fs.Bool("quiet", false, "do not show llama-server's own log")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bcode model serve --model FILE.gguf [flags] [-- extra llama-server args]")
		fmt.Fprintln(stderr, "\nStarts llama-server with flags for an 8 GB GPU and 64 GB of RAM (every layer on the GPU, MoE experts in RAM,\nflash attention, q8_0 KV cache, --jinja for native tool calls), waits until the model is loaded, and restarts\nit if it dies. Ctrl-C stops it.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.ExtraArgs = fs.Args()
	if !*quiet {
		o.Log = stderr
	}
	starting := func(args []string) {
		fmt.Fprintf(stdout, "starting llama-server %s\n", strings.Join(args, " "))
	}
	ready := func(url string, tokens int, err error) {
		if err != nil {
			fmt.Fprintf(stdout, "ready at %s (the tokenizer did not answer: %v)\n", url, err)
			return
		}
		fmt.Fprintf(stdout, "ready at %s; tokenizer ok (a one-line Go function is %d tokens). Ctrl-C stops the server.\n", url, tokens)
	}
	if err := app.ServeModel(ctx, o, starting, ready); err != nil {
		errorf(stderr, "bcode model serve", "%v", err)
		return 1
	}
	return 0
}
