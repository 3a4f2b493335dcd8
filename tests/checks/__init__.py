"""Specification of the semantic checks: one file per module of estategen.checks."""
