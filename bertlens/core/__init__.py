"""The ground every capability stands on: model sources and families, the one model loader, tokens, safe outputs,
result types, errors and the option vocabularies shared by the library, the CLI and the web API."""
