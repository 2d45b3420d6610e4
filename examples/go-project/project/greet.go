package main

// greet returns teh greeting for one person.
func greet(name string) string { return "hello, " + name }

// names lists the people to greet.
func names() []string { return []string{"ada", "grace"} }
