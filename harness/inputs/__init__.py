"""Data in: a task's dataset found (a local build or `hf://`), its files verified against the build's
manifest and its split read without decoding an image; and each row made into what a model is sent
(chat messages, image sizes and token figures, an alias's input policies, a task's truncation and text
round trip)."""
