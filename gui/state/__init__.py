"""Qt-free state: the run state, its controller and the commands' tasks, the model holder, requests, the tour."""
