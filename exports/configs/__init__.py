"""Export configurations: the YAML document (docs/exports.md) read and validated into an
ExportDefinition, saved in the registry, listed, and scheduled."""
