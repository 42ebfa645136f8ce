"""How a backend sizes and orders its batches: by token budget (`batching`), by what fits in device memory
(`auto_batch`), and requests sharing a prompt prefix together (`prefix_order`). The runner orders pending requests
with `prefix_order` too."""
