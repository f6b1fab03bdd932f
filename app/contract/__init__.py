"""The contract: what goes in and out (models, the one error shape, answers, OpenAPI)."""
