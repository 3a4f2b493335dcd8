"""Jinja templates compiled to Python (see estategen.render.CompiledLoader); generated."""
