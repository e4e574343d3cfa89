package main

// FIXME(review): handle errors
func main() {}
