"""`otelguard demo`: scripted loops, guarded, in process or through `otelguard serve`."""
