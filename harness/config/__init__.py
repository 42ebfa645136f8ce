"""Configuration and the task index: task and group YAML in lm-eval's schema (`!function` hooks,
`include:`), read into typed configs and found by name (`harness ls`), and the names of the group
aggregations a config may use."""
