"""The model layer: the backends, their registry (`registry`: one line a backend, naming the package whose
`BACKEND`, a `backend_spec.BackendSpec`, declares it) and what they stand on: the model facts (`facts`), the model
families (`families`: one module a family), the aliases (`aliases`) and the plumbing the backends share (`shared`).
A family is imported only when a run needs it: by a checkpoint's config, an API model's name or an alias."""
