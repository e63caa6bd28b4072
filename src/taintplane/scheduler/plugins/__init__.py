"""In-tree scheduler plugins, one per module; names and messages are upstream's."""
