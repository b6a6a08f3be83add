"""Sandboxed template engines for untrusted prompt files and test data: Jinja2 in an
immutable sandbox (render.py, sandbox.py), Mustache (mustache.py), Python format
strings (pyformat.py), Verdict templates (verdict_template.py), and the restricted
expression evaluator of LVE lambdas and Verdict placeholders (restricted.py,
restricted_ops.py).

Imports nothing: plain commands must not load jinja2 (tests/test_startup.py).
"""
