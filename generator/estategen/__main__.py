"""Allow ``python -m estategen``."""

from estategen.cli import main

raise SystemExit(main())
