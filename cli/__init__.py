"""The command-line front end (`python main.py prepare|models|run|replay`), beside the window in gui/: argument
parsing, terminal output and exit codes over models/, runtime/ and decoding/. main.py dispatches to the
`*_command` modules; each provides add_arguments(parser) and run(args) -> exit code."""
