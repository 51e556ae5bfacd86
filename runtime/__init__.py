"""LSE runtime."""
