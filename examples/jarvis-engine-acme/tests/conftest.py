pytest_plugins = ["jarvis_core.testing.pytest_plugin"]
