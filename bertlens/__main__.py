from bertlens.cli import command

raise SystemExit(command())
