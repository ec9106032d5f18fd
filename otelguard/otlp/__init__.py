"""The OTLP wire formats: OTLP/JSON values and spans, log records, protobuf and JSON requests, bounded line reading."""
