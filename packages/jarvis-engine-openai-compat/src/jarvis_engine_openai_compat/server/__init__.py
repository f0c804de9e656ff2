"""Starting and stopping a llama.cpp server (``llama-server`` or xllamacpp hosted in a Python subprocess).

Used by the test fixture, the managed worker and the embedded engine; the HTTP engines never import it.
"""
