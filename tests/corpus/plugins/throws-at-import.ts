// A policy that throws while its module is being evaluated.
throw new Error("cannot initialise: missing config");
