"""jarvis-engine-acme: the second worked example of docs/plugins.md (an HTTP engine with streaming, a
text tool-call parser and a model-family defaults rule). Importing the package imports nothing."""
