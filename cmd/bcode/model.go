package main

import (
	"context"
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
		summary: "serve a local model: bcode model serve --model FILE.gguf starts and supervises llama-server",
		run:     cmdModel,
	})
}

var modelGroup = commandGroup{
	name:  "bcode model",
	about: "  serve --model FILE.gguf [FLAGS] [-- LLAMA_SERVER_ARG...]   start llama-server with the model and keep it running",
	subs:  map[string]subcommand{"serve": cmdModelServe},
}

func cmdModel(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	return modelGroup.run(ctx, eng, args, stdout, stderr)
}

func cmdModelServe(ctx context.Context, eng *app.Engine, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bcode model serve --model FILE.gguf [--port N] [--ctx N] [--ngl N] [--quiet] [-- LLAMA_SERVER_ARG...]", stdout, stderr)
	fs.about = "Starts llama-server with flags for an 8 GB GPU and 64 GB of RAM (every layer on the GPU, MoE experts in RAM,\n" +
		"flash attention, q8_0 KV cache, --jinja for native tool calls), waits until the model is loaded, and restarts\n" +
		"it if it dies. Ctrl-C stops it. The arguments after -- go to llama-server as they are."
	o := app.DefaultModelServer()
	fs.StringVar(&o.Model, "model", "", "the GGUF model file `FILE.gguf` to serve (required; nothing is downloaded)")
	fs.StringVar(&o.Binary, "llama-server", o.Binary, "llama.cpp's llama-server binary: a `PATH` or a name on PATH")
	fs.StringVar(&o.Host, "host", o.Host, "the address `ADDR` to listen on")
	intFlag(fs, &o.Port, "port", o.Port, 1, 65535, "port to listen on (bcode's [model] endpoint defaults to 8080)")
	intFlag(fs, &o.Context, "ctx", o.Context, config.DefaultMinContext, maxModelContext, "context window in tokens (-c)")
	intFlag(fs, &o.GPULayers, "ngl", o.GPULayers, 0, maxModelLayers, "layers offloaded to the GPU (-ngl)")
	intFlag(fs, &o.CPUMoE, "n-cpu-moe", o.CPUMoE, 0, maxModelLayers, "layers whose MoE experts stay in system RAM (--n-cpu-moe)")
	durationFlag(fs, &o.LoadTimeout, "load-timeout", o.LoadTimeout, time.Second, maxTimeout, "how long to wait for the model to load")
	quiet := fs.Bool("quiet", false, "do not show llama-server's own log")
	extra, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if o.Model == "" {
		return fs.usageErr("give the model: --model FILE.gguf (a GGUF file you already have; bcode downloads none)")
	}
	o.ExtraArgs = extra
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
