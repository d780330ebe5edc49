"""What the tests and the benchmarks share: a model server that answers every task perfectly."""
