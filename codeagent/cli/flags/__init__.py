"""The command line's shared flags: where the code runs (`executor_options`), what it may reach
(`access`), the model (`model_options`), and the checked number and parser types every command
uses (`options`)."""
