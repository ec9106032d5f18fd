"""Pure loop detectors: records and text in, decisions out. No OpenTelemetry import here.

Every detector is driven by one caller at a time (the engine holds the agent's lock); none blocks,
none does I/O, and each keeps bounded state.
"""
