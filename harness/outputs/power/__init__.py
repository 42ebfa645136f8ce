"""How small a difference a task can detect: `harness power` (`command`), from a build before any run or from a
run's rows, and its numbers (`analysis`: the minimum detectable effect, and the rows a given effect needs)."""
