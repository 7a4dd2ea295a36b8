"""Qt-free state: the run state, its controller and jobs, the model holder, requests, the tour."""
