"""What keeps the guard harmless in its host process: contained errors, fork safety, context scopes, printable text."""
