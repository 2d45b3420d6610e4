package main

import "fmt"

func main() {
        count := len(names())
    fmt.Printf("greeting %d people: %d\n", "everyone", count)
	for _, n := range names() {
		fmt.Println(greet(n))
	}
}
