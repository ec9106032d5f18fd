"""What a verdict does: delivery, control-hook dispatch, metrics, evaluation events, span enrichment, the control API."""
