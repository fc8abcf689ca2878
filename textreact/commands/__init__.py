"""The command line's home: `textreact.cli` parses the flags and dispatches; each command is a
module here that registers its parser (`add_parser`) and runs it (`handle(args, env) -> int`).

`flags` holds the exit codes, the argparse types and the flags more than one command takes;
`question` reads the QUESTION argument; `model` opens the model the flags name; `terminal`
writes what a command prints; `live` shows a run's turns as they happen; `environment` is the
one reader of the process environment. `serve`'s command is `textreact.serve.cli`, beside the
server it starts."""
