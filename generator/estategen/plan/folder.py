"""Reading the output folder: the files and MANIFEST.json entries of the earlier render
(:func:`previous_output`), and the model its estate.json records (:func:`recorded_model`).
Both are refused (exit 2) when the folder holds what no render wrote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from estategen.model import Estate
from estategen.readback import OutputFolder, OutputRefused, check_content
from estategen.recorded import NotRecorded, estate_from_data
from estategen.write import check_output_folder


def previous_output(
    target: Path, rendered: Mapping[str, bytes]
) -> tuple[dict[str, bytes], dict[str, dict[str, str]]]:
    """(files, manifest entries) of earlier estategen output; empty for a new folder.

    Read through :class:`OutputFolder`: bounded, regular files only, never through a link or
    outside the folder, and refused (exit 2) beyond the limits a blueprint obeys. A file whose
    bytes are what this render writes (``rendered``) is within them already: only the others
    have their structure checked.
    """
    if not os.path.lexists(target):
        return {}, {}
    check_output_folder(target)  # the folders render refuses, with render's words
    with OutputFolder(target) as folder:
        manifest = folder.manifest()
        if manifest is None:
            # an empty folder, or a render into a mount point killed while it swapped its
            # entries in (render finishes it): nothing estategen wrote to compare with
            return {}, {}
        files = {}
        for path in manifest.files:
            read = folder.read(path)
            if read is not None:
                if read.content != rendered.get(path):
                    check_content(path, read.content, target / path)
                files[path] = read.content
    return files, manifest.files


def recorded_model(before: Mapping[str, Any], target: Path) -> Estate:
    """The model the folder's estate.json records, every key and type checked: one that holds
    what no render wrote (a hand edit) cannot be compared, and is refused (exit 2) with the
    key and what is wrong with it."""
    try:
        return estate_from_data(before)
    except NotRecorded as err:
        raise OutputRefused(
            f"{target / 'estate.json'}: cannot compare models: {err}; restore the file the last "
            "render wrote, or render again"
        ) from None
