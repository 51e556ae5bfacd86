"""LSE runtime/chat."""
