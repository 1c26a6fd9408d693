//! The model's final answer: exactly one fenced code block with a kernel.

use crate::error::LlmError;

/// The code of the one fenced block that holds a `__global__` function.
pub fn kernel_block(reply: &str) -> Result<&str, LlmError> {
    let bad = |m: &str| LlmError::BadKernel(m.to_owned());
    let (blocks, unclosed) = fenced_blocks(reply);
    let with_kernel: Vec<&str> = blocks.into_iter().filter(|b| b.contains("__global__")).collect();
    match with_kernel.as_slice() {
        [one] => Ok(one),
        [] if unclosed.is_some_and(|b| b.contains("__global__")) => {
            Err(bad("the code block is not closed: the reply was cut off"))
        }
        [] => Err(bad("the reply holds no code block with a `__global__` kernel")),
        many => Err(LlmError::BadKernel(format!(
            "the reply holds {} code blocks with kernels; exactly one is allowed",
            many.len()
        ))),
    }
}

/// The contents of each closed ``` block, and of a last unclosed one.
fn fenced_blocks(text: &str) -> (Vec<&str>, Option<&str>) {
    let mut blocks = Vec::new();
    let mut open: Option<usize> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            match open.take() {
                Some(start) => blocks.push(&text[start..offset]),
                None => open = Some(offset + line.len()),
            }
        }
        offset += line.len();
    }
    (blocks, open.map(|start| &text[start..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(reply: &str, expected: Result<&str, &str>) {
        let got = kernel_block(reply).map_err(|e| e.to_string());
        assert_eq!(got.as_deref().map_err(String::as_str), expected);
    }

    #[test]
    fn picks_the_one_kernel_block() {
        check("Plan: vectorize.\n```cuda\n__global__ void k() {}\n```\n", Ok("__global__ void k() {}\n"));
        check("```sh\nnvcc x.cu\n```\n```\n__global__ void k() {}\n```", Ok("__global__ void k() {}\n"));
        check("no code here", Err("the reply holds no code block with a `__global__` kernel"));
        check("```cuda\n__global__ void k() {\n", Err("the code block is not closed: the reply was cut off"));
        check(
            "```cuda\n__global__ void k() {}\n```\nor\n```cuda\n__global__ void k() {}\n```",
            Err("the reply holds 2 code blocks with kernels; exactly one is allowed"),
        );
    }
}
