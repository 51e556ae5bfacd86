"""LSE benchmarks (docs/performance.md): measurements of the product, outside it."""
