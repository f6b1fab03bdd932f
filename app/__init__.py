"""Review lab: one slow cross-encoder behind four ways of coping with overload."""
