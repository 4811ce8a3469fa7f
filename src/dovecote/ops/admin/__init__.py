"""Administration: verify, doctor, copy and migrate between stores, the git merge driver."""
