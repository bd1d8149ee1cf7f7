"""Running a study: preflight, one run at a time (build, measure, collect, tear down),
validity, and the record of the machine it ran on."""
