"""The Pulumi program estategen copies into every ``pulumi/<cluster>/`` project.

It ships inside the estategen distribution as ``estategen_stacks`` so the renderer can copy
``__main__.py`` byte for byte without importing it (and so without importing Pulumi).
"""
