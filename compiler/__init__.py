"""LSE compiler."""
