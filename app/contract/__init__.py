"""The contract: what goes in and out (models, answers, the error handlers, OpenAPI);
the one error shape itself is app/errors.py, below every package."""
