"""Mutation testing of prompts: changed copies of the prompt under test (mutants), the
saved test suite run on each, and the share of mutants the suite notices (killed).
See docs/mutation.md. Operators (`operators`), the mutant list (`mutants`, a stage),
the runs of the mutants (`mutant_runs`, a stage) and the kill rule (`score`)."""
