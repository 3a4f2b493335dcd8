"""``python -m estategen.schema``: write ``data/schema.json``, the JSON Schema the package
ships so that ``estategen schema`` prints it without importing the validator."""

from estategen.schema.json_schema import SHIPPED_SCHEMA, json_schema_text

if __name__ == "__main__":
    SHIPPED_SCHEMA.write_text(json_schema_text(), encoding="utf-8")
    print(f"{SHIPPED_SCHEMA}: written")
