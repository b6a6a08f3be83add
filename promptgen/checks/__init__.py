"""Checks on model outputs: deterministic assertions (zero LLM cost) and LLM-judge metrics."""
