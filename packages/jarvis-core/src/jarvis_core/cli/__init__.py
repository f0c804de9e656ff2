"""The ``jarvis`` command line (``jarvis_core.cli.main:main``).

Commands live in ``cmd_<name>.py`` modules, each exposing ``add_parser(subparsers)`` and ``run(args) -> int``;
:mod:`jarvis_core.cli.main` imports only the module of the command being run.
"""
