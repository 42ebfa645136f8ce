"""The backends, a package each, named in `harness.models.registry`: local (`hf`, `vllm_engine`,
`sglang_engine`), API (`openai_chat`, `gemini`, `anthropic_messages`, over the client they share: `api_client`),
`baselines` (`random`, `constant`), and `replicas` (any backend as a pool of Ray actors)."""
